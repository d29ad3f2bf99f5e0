"""The knowledge package (issue 19): the compiled knowledge base in the cache is keyed by the source
of every module that decides it, so an edit to any one of them is never answered from a stale cache."""
from advisor.base import cache
from advisor.judgement.knowledge import loader


def test_editing_any_module_of_the_package_changes_the_compiled_kb_key(monkeypatch):
    real = cache.source_of
    before = loader._compiled_key("rules-digest", "catalog-digest")
    for module in ("__init__", "language", "evaluation", "lint", "texts", "loader"):
        name = "judgement.knowledge" if module == "__init__" else f"judgement.knowledge.{module}"

        def edited(*modules, name=name):
            return b"".join(real(m) + (b"\n# edited\n" if m == name else b"") for m in modules)
        monkeypatch.setattr(cache, "source_of", edited)
        assert loader._compiled_key("rules-digest", "catalog-digest") != before, module
    monkeypatch.setattr(cache, "source_of", real)
    assert loader._compiled_key("rules-digest", "catalog-digest") == before
