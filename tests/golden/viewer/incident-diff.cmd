ownership show incident.json --diff
