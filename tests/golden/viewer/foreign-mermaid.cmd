ownership show foreign.json --mermaid
