"""Adapters that let other frameworks use a member's memory: :mod:`.langgraph` (LangGraph's
store). Each needs its framework installed (an optional extra); none is imported by memmesh
itself."""
