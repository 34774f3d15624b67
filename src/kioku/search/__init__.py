"""Pure search functions: tokenizer, fusion, re-ranker, confidence."""
