ownership show incident.json --step 2
