ownership show incident.json --mermaid
