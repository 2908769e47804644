"""`python -m coder.models.fake_rules` prints the rule table as Markdown (docs/fake-server-rules.md)."""

from coder.models.fake_rules import rule_table

print(rule_table())
