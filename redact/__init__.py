"""Secret detection and redaction (placeholder; filled by the redaction work)."""
