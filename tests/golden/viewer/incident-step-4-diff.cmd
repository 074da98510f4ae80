ownership show incident.json --step 4 --diff
