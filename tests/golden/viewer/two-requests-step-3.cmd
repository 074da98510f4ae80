ownership show two_requests.json --step 3
