ownership show hostile.json --step 2
