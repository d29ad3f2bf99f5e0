"""A rack sold only whole (GB200/GB300 NVL72): refused for a job of half a rack or less, and under a GPU
ceiling below one rack; taken, with its idle GPUs said, for a job that needs most of one."""
import conftest


def decide(catalog, kb, data):
    return conftest.decide(catalog, kb, data)


DSV3_2048 = {"mode": "inference", "model": "deepseek-v3", "precision": "fp8", "concurrency": 2048, "prompt_tokens": 2000,
             "output_tokens": 500, "constraints": {"gpus": ["gb200-nvl72"]}}


def test_a_job_on_most_of_a_rack_takes_it_and_says_what_sits_idle(catalog, kb):
    # DeepSeek-V3 for 2,048 users within 40 ms a token: 4 replicas of DEP 16 on 64 GPUs (DEP 8 x 9 fills the
    # rack at 42.7 ms and misses). It had read "No GPU can be recommended": the rack was refused as for a small job
    d = decide(catalog, kb, DSV3_2048)
    r = d.record["recommendation"]
    assert (r["gpu"], r["count"], r["ep"], r["attention_dp"], r["dp"]) == ("gb200-nvl72", 64, 16, 16, 4)
    warn = next(x for x in d.record["warnings"] if x["rule"] == "most-rented-gpus-idle")
    assert "64 card(s) used of the instances rented, 8 GPU(s) idle and paid for" in warn["text"]
    c = next(x for x in d.record["candidates"] if x["gpu"] == "gb200-nvl72")
    assert not c["excluded"]


def test_a_small_job_or_a_ceiling_below_a_rack_refuses_it(catalog, kb):
    # the chat assistant (Llama 3.1 8B) on one card of a rack
    small = decide(catalog, kb, {"mode": "inference", "model": "llama-3.1-8b", "concurrency": 1,
                                 "constraints": {"gpus": ["gb200-nvl72", "h200-sxm"]}})
    c = next(x for x in small.record["candidates"] if x["gpu"] == "gb200-nvl72")
    assert c["count"] == 1 and c["excluded_by"][0]["rule"] == "rack-scale-system-for-a-small-job"
    assert "uses 1 of its GPUs, half the rack or less" in c["excluded_by"][0]["reason"]
    capped = decide(catalog, kb, {**DSV3_2048, "constraints": {"gpus": ["gb200-nvl72", "h200-sxm"], "max_gpus": 64}})
    c = next(x for x in capped.record["candidates"] if x["gpu"] == "gb200-nvl72")
    assert [x["rule"] for x in c["excluded_by"]] == ["rack-scale-system-above-the-gpu-ceiling"]
    assert "more than the workload's max_gpus of 64" in c["excluded_by"][0]["reason"]
