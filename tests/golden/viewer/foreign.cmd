ownership show foreign.json
