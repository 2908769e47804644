"""The patch reviewer: `pipeline.review()` runs the stages (mechanical: `mechanical`, `hygiene`; gaming guards:
`gaming`, `specialcase`, `testconfig`; the project's tests: `testing`; the LLM review: `llm`) over a diff and
returns a `types.ReviewResult`. `cli` adds `coder review`."""
