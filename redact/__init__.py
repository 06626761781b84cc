"""Secret detection and redaction: every text goes through here before it is stored, sent to a
model, logged or printed. `engine.Redactor` is the entry point (presidio-analyzer with our RE2
rules behind a prefilter: `patterns`, `rules`, `prefilter`, `scanner`, `handlers`, `arguments`,
`shapes`, `keys`); `memory` remembers detected credentials by keyed hash; `rescan` re-scrubs
stored text when new secrets were learned."""
