ownership show not-itf.json
