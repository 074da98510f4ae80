ownership show hostile.json --mermaid
