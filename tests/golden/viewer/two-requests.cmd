ownership show two_requests.json
