"""Consolidation: near-duplicate memories merged, contradictions surfaced for their owner to
resolve, and decay."""
