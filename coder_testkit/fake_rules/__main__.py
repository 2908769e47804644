"""`python -m coder_testkit.fake_rules` prints the rule table as Markdown (docs/fake-server-rules.md)."""

from coder_testkit.fake_rules import rule_table

print(rule_table())
