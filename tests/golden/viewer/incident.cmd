ownership show incident.json
