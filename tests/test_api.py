"""Self-host or pay per token (issue 24), on the dated LiteLLM cut tests/data/litellm-prices-2026-12-01.json
(14 entries of BerriAI/litellm v1.110.2's price table, retrieved 2026-12-01)."""
import dataclasses

import pytest

from advisor.inputs import apiprices, workload
from advisor.inputs.catalog import load_api_prices
from advisor.judgement import decision
from advisor.numbers import api
from advisor.numbers import estimate as estimator
from advisor.shell.cli import main

from conftest import EXAMPLES, ROOT

SNAPSHOT = ROOT / "tests" / "data" / "litellm-prices-2026-12-01.json"


@pytest.fixture(scope="module")
def snap(catalog, tmp_path_factory):
    """The shipped catalog with its API prices replaced by the test snapshot's, imported as a user would."""
    out = tmp_path_factory.mktemp("api") / "api-prices.yaml"
    assert main(["prices", "import-api", str(SNAPSHOT), "--date", "2026-12-01", "--source", "test cut", "--out", str(out)]) == 0
    return dataclasses.replace(catalog, api_prices=load_api_prices(out, catalog.models))


def decide(cat, kb, name, **data):
    base = dict(workload.yamlio.load(EXAMPLES / f"{name}.yaml"))
    base.update(data)
    w = workload.parse(base, cat, "test")
    return decision.decide(estimator.estimate(w, cat), kb, cat)


def test_importer_maps_provider_ids_and_lists_what_it_could_not(catalog):
    text, rows, unmapped = apiprices.import_api_prices(SNAPSHOT, catalog, "2026-12-01", "test cut")
    got = {r["provider_model"]: r["model"] for r in rows}
    assert got == {
        "wandb/openai/gpt-oss-120b": "gpt-oss-120b", "deepinfra/openai/gpt-oss-120b": "gpt-oss-120b",
        "groq/openai/gpt-oss-120b": "gpt-oss-120b", "together_ai/openai/gpt-oss-120b": "gpt-oss-120b",
        "deepinfra/meta-llama/Meta-Llama-3.1-70B-Instruct": "llama-3.1-70b",
        "fireworks_ai/accounts/fireworks/models/llama-v3p1-70b-instruct": "llama-3.1-70b",
        "meta.llama3-1-70b-instruct-v1:0": "llama-3.1-70b",
        "deepinfra/mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    }
    # a fine-tune and another Mistral 7B checkpoint are listed, never guessed; a closed model is no
    # catalog family; free or local entries ($0: lemonade, Vertex MaaS) are no offer
    assert unmapped == ["deepinfra/NousResearch/Hermes-3-Llama-3.1-70B", "ovhcloud/Mistral-7B-Instruct-v0.3"]
    groq = next(r for r in rows if r["provider"] == "groq")
    assert (groq["usd_per_million_input"], groq["usd_per_million_cached_input"], groq["usd_per_million_output"]) == (0.15, 0.075, 0.6)
    assert "unmapped:\n  - \"deepinfra/NousResearch/Hermes-3-Llama-3.1-70B\"" in text


def test_import_refuses_to_write_over_its_input(tmp_path, capsys):
    copy = tmp_path / "prices.json"
    copy.write_bytes(SNAPSHOT.read_bytes())
    assert main(["prices", "import-api", str(copy), "--out", str(copy)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert copy.read_bytes() == SNAPSHOT.read_bytes()


def test_import_of_a_file_that_is_not_json_names_the_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "a": 1,\n  oops\n}\n')
    assert main(["prices", "import-api", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3" in err and "Traceback" not in err


def test_a_bad_api_price_row_is_reported_with_file_line_and_field(catalog, tmp_path):
    f = tmp_path / "api-prices.yaml"
    f.write_text("api_prices:\n  - {model: gpt-oss-120b, provider: x, provider_model: x/y, usd_per_million_input: -1,"
                 " usd_per_million_output: 0.6, date: 2026-12-01, source: s}\n")
    from advisor.base.errors import InputError
    with pytest.raises(InputError) as exc:
        load_api_prices(f, catalog.models)
    p = exc.value.problems[0]
    assert (p.line, p.field) == (2, "usd_per_million_input")


def test_break_even_by_hand_for_the_chat_assistant_on_l40s(snap):
    # gpt-oss-120b, 1,000 prompt + 1,000 output tokens, 64 sequences, rented 24x7 (no utilisation given)
    w = workload.load(EXAMPLES / "chat-assistant.yaml", snap)
    plan = estimator.estimate(w, snap).candidate("l40s")
    a = api.compare(plan, w, snap)
    assert a.match == "model" and a.offers_considered == 4
    # cheapest: wandb, $0.03 in / $0.17 out: (1,000 x 0.03 + 1,000 x 0.17) / 2,000 = $0.10 per million tokens
    assert a.offers[0]["provider"] == "wandb"
    assert a.api_usd_per_million_tokens == pytest.approx(0.10)
    # the spread beside the cheapest: 4 providers at 0.10, 0.1035 (deepinfra: 0.037 in / 0.17 out), 0.375, 0.375
    # (groq, together: 0.15 / 0.60): median (0.1035 + 0.375) / 2
    assert a.providers == 4 and a.median_usd_per_million_tokens == pytest.approx((0.1035 + 0.375) / 2)
    # 8 x L40S (TP 8: it holds the 30 ms per token gpt-oss-120b is held to; 4 did before the decode step's
    # MXFP4 experts ran at the mixed-input matmul share on a card without FP4 units, issue 46)
    # at $3.44/h, rented 24 h a day: $82.56 a day; / $0.10 per million = 825.6 million tokens a day
    assert plan.usd_per_hour == pytest.approx(3.44)
    assert a.plan_usd_per_day == pytest.approx(82.56)
    assert a.break_even_tokens_per_day == pytest.approx(825.6e6)
    # it serves tokens_per_s output tokens/s, as many prompt tokens again: x 2 x 86,400 s a day
    assert a.load_tokens_per_day == pytest.approx(plan.tokens_per_s * 2 * 86400)
    assert a.plan_usd_per_million_tokens == pytest.approx(82.56 / a.load_tokens_per_day * 1e6)
    assert a.break_even_utilisation == pytest.approx(825.6e6 / (plan.tokens_per_s * 2 * 86400))


def test_cached_prompt_tokens_are_billed_at_the_cached_price(snap):
    groq = next(x for x in snap.api_prices if x.provider == "groq")
    # half of 1,000 prompt tokens cached: (500 x 0.15 + 500 x 0.075 + 1,000 x 0.6) / 2,000
    assert api.blended_usd_per_million(groq, 1000, 1000, 0.5) == pytest.approx(0.35625)
    # a provider with no cached price bills cached tokens as input
    wandb = next(x for x in snap.api_prices if x.provider == "wandb")
    assert api.blended_usd_per_million(wandb, 1000, 1000, 0.5) == pytest.approx(0.10)


def test_on_premises_plans_are_charged_their_running_cost_all_day(snap):
    w = workload.load(EXAMPLES / "on-prem-70b-serving.yaml", snap)
    plan = next(c for c in estimator.estimate(w, snap).candidates if c.fits and c.usd_per_hour)
    a = api.compare(plan, w, snap)
    u = plan.tco["inputs"]["utilisation"]["value"]
    assert a.busy_share == u
    assert a.plan_usd_per_day == pytest.approx(plan.usd_per_hour * 24)
    assert a.load_tokens_per_day == pytest.approx(plan.tokens_per_s * (w.prompt_tokens + w.output_tokens) / w.output_tokens * 86400 * u)


def test_one_user_on_a_dedicated_plan_is_warned_that_an_api_is_cheaper(snap, kb):
    d = decide(snap, kb, "gpt-oss-120b-one-user")
    winner = d.record["recommendation"]["gpu"]
    warned = [x for x in d.record["warnings"] if x["rule"] == "api-cheaper-at-this-load" and x["gpu"] == winner]
    assert warned and "an API sells gpt-oss-120b for $0.10 per million" in warned[0]["text"]
    a = d.record["api_comparison"]
    assert a["load_share_of_break_even"] < 0.5


def test_sixty_four_users_are_not_warned(snap, kb):
    d = decide(snap, kb, "chat-assistant")
    winner = d.record["recommendation"]["gpu"]
    assert not [x for x in d.record["warnings"] if x["rule"] == "api-cheaper-at-this-load" and x["gpu"] == winner]
    assert d.record["api_comparison"]["load_share_of_break_even"] > 0.5


def test_a_model_no_api_sells_says_so(snap, kb):
    d = decide(snap, kb, "chat-assistant", model="falcon-180b")
    assert d.record["api_comparison"]["match"] == "none"
    assert any(x["rule"] == "no-api-sells-model" for x in d.record["warnings"])


def test_a_custom_model_is_compared_with_its_size_class_and_says_so(snap, kb):
    d = decide(snap, kb, "chat-assistant", model={"params_b": 70, "layers": 80, "hidden_size": 8192})
    a = d.record["api_comparison"]
    assert a["match"] == "size-class" and "llama-3.1-70b" in a["models"]
    assert any(x["rule"] == "api-size-class-only" for x in d.record["warnings"])


def test_prefix_cache_hit_out_of_range_is_one_line_with_file_line_and_field(tmp_path, capsys):
    f = tmp_path / "w.yaml"
    f.write_text("mode: inference\nmodel: gpt-oss-120b\nprefix_cache_hit: 1.5\n")
    assert main(["recommend", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{f}:3" in err and "prefix_cache_hit" in err and len(err.splitlines()) == 1


def test_the_chat_assistant_memo_gives_the_line(capsys):
    assert main(["recommend", str(EXAMPLES / "chat-assistant.yaml"), "--format", "md"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("**Self-host or API:**"))
    assert "An API: $0.10 per million tokens in + out (wandb, 2026-12-01; cheapest of 29, median $0.38)" in line
    # 2 x H100 SXM at $2.58/h ($61.92 a day / $0.10 per million = 619 million a day) serve 637 million
    # (about 3,690 output tokens/s x 86,400 s, with as many prompt tokens: $61.92 / 637 million = $0.097)
    assert "; this plan $0.097 in + out at 637 million a day: self-hosting is cheaper above 619 million a day" in line


def test_a_break_even_past_the_plans_whole_day_is_said_so():
    # Llama 3.1 405B FP8 on 8 x H100: $1.72 per million tokens against an API's $0.21; breaking even
    # would take 8.21 of the plan's days a day, so no load it can carry makes self-hosting cheaper
    from advisor.shell.wording import api_line
    a = {"match": "model", "offers": [{"provider": "hyperbolic", "date": "2026-12-01"}], "providers": 9,
         "median_usd_per_million_tokens": 2.4, "api_usd_per_million_tokens": 0.21, "plan_usd_per_million_tokens": 1.72,
         "break_even_tokens_per_day": 1.18e9, "load_tokens_per_day": 144e6, "break_even_utilisation": 8.21}
    assert api_line(a) == ("An API: $0.21 per million tokens in + out (hyperbolic, 2026-12-01; cheapest of 9, median $2.40); "
                           "this plan $1.72 in + out: the API is cheaper at any load")
    assert api_line({**a, "break_even_utilisation": 0.8}).endswith("the API is cheaper below 1,180 million a day")


def test_an_offer_far_under_the_median_is_set_aside_and_named(catalog, kb):
    # the reviewer's F5: one provider lists Llama 3.1 405B at a 15th of the others' median. With three
    # providers or more, an offer under a quarter of the median is set aside as a likely stale row, named in
    # the record and the memo's API line; the comparison uses the cheapest of the rest
    def row(provider, usd):
        return apiprices.ApiPrice("llama-3.1-405b", provider, f"{provider}/405b", usd, None, usd, "2026-12-01", "test", "t", 1)
    cat = dataclasses.replace(catalog, api_prices=[row("cheap", 0.16), row("a", 0.80), row("b", 2.40), row("c", 3.00), row("d", 3.50)])
    d = decide(cat, kb, "llama-70b-128-users", model="llama-3.1-405b", precision="fp8", concurrency=32)
    a = d.record["api_comparison"]
    assert a["median_usd_per_million_tokens"] == pytest.approx(2.40) and a["providers"] == 5
    assert [x["provider"] for x in a["set_aside"]] == ["cheap"]
    assert a["api_usd_per_million_tokens"] == pytest.approx(0.80) and a["offers"][0]["provider"] == "a"
    from advisor.shell import wording
    line = wording.api_line(a)
    assert "An API: $0.80 per million tokens in + out (a, 2026-12-01; cheapest of 4, median $2.40; not counted: cheap $0.16, under a quarter of the median and apart from the rest: likely a stale row)" in line
    # three of seven providers selling cheap together are a market, not a stale row: none is set aside
    crowd = dataclasses.replace(catalog, api_prices=[row("p1", 0.30), row("p2", 0.40), row("p3", 0.50), row("b", 2.40),
                                                     row("c", 3.00), row("d", 3.50), row("e", 4.00)])
    a3 = decide(crowd, kb, "llama-70b-128-users", model="llama-3.1-405b", precision="fp8", concurrency=32).record["api_comparison"]
    assert a3["set_aside"] == [] and a3["api_usd_per_million_tokens"] == pytest.approx(0.30)
    # with two providers nothing is set aside: no median to judge by
    two = dataclasses.replace(catalog, api_prices=[row("cheap", 0.16), row("b", 2.40)])
    a2 = decide(two, kb, "llama-70b-128-users", model="llama-3.1-405b", precision="fp8", concurrency=32).record["api_comparison"]
    assert a2["set_aside"] == [] and a2["api_usd_per_million_tokens"] == pytest.approx(0.16)
