"""What spans more than one request: retry, continue and fall back mid-answer, and rate
limits and concurrency shared between requests.

This layer sits above the I/O layer (it makes requests with `rs.chat`) and below serving.
"""
