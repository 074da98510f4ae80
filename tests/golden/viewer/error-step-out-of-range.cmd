ownership show incident.json --step 7
