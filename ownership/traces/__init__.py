"""The modules behind ownership.trace (import traces from there): a trace's data, its
violation's words, reading JSON, ITF, writing files whole, and replay."""
