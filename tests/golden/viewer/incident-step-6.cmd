ownership show incident.json --step 6
