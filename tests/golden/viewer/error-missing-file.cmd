ownership show no-such-trace.json
