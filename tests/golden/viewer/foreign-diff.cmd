ownership show foreign.json --diff
