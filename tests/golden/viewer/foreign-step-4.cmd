ownership show foreign.json --step 4
