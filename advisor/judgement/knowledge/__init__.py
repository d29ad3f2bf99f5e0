"""The knowledge base: YAML rules loaded safely, checked (lint), and compiled into conditions that
both the durable_rules engine and the plain-Python why-not evaluator run.

Rule language (docs/rules.md): id, title, source, group, priority, when, then, because, examples.
A condition is {FACT: {OP: VALUE}} (or {FACT: VALUE} for eq), combined with all / any / not.

One module per job (README.md beside this file); this package re-exports what callers use, so
`from advisor.judgement import knowledge; knowledge.load()` reads as before the split.
"""
from advisor.judgement.knowledge.evaluation import evaluate, failing, number_of, parse_pattern, pattern_matcher
from advisor.judgement.knowledge.language import (EFFECTS, ID_RE, LEAVES_PER_SET, MAX_LIST, MAX_NUMBER, MAX_PATTERN,
                                                  MAX_PROPERTIES, MAX_QUANTIFIERS, MAX_WEIGHT, NEGATE, OPS, RULE_KEYS,
                                                  SELECTORS, SEVERITIES, SYMBOL, KnowledgeBase, Leaf, Node, Rule, leaves)
from advisor.judgement.knowledge.lint import ALWAYS, vocabulary
from advisor.judgement.knowledge.loader import (HOME, NOT_RULES, RULES_DIR, folder_digest, is_shipped, load,
                                                rule_dirs)
from advisor.judgement.knowledge.texts import FILTERS, compiled_template, template_env

__all__ = ["ALWAYS", "EFFECTS", "FILTERS", "HOME", "ID_RE", "LEAVES_PER_SET", "MAX_LIST", "MAX_NUMBER", "MAX_PATTERN",
           "MAX_PROPERTIES", "MAX_QUANTIFIERS", "MAX_WEIGHT", "NEGATE", "NOT_RULES", "OPS", "RULES_DIR", "RULE_KEYS",
           "SELECTORS", "SEVERITIES", "SYMBOL", "KnowledgeBase", "Leaf", "Node", "Rule", "compiled_template",
           "evaluate", "failing", "folder_digest", "is_shipped", "leaves", "load", "number_of", "parse_pattern",
           "pattern_matcher", "rule_dirs", "template_env", "vocabulary"]
