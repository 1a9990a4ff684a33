"""Calls Envoy's RLS v3 ShouldRateLimit and prints the answer as JSON.

Usage: rls_client.py HOST:PORT DOMAIN KEY=VALUE[,KEY=VALUE...]...

Each argument after the domain is one descriptor. Prints
{"overall_code": ..., "statuses": [...], "headers": {...}} on an answer,
{"error": STATUS, "message": ...} on a gRPC error (exit status 2).
Needs the PyPI packages envoy-data-plane and grpclib.
"""

import asyncio
import json
import sys

import grpclib
from grpclib.client import Channel
from envoy_data_plane.envoy.extensions.common.ratelimit.v3 import (
    RateLimitDescriptor,
    RateLimitDescriptorEntry,
)
from envoy_data_plane.envoy.service.ratelimit.v3 import (
    RateLimitRequest,
    RateLimitServiceAsyncStub,
)


def descriptor(arg):
    entries = [pair.split("=", 1) for pair in arg.split(",")]
    return RateLimitDescriptor(
        entries=[RateLimitDescriptorEntry(key=k, value=v) for k, v in entries]
    )


def status(s):
    limit = s.current_limit
    return {
        "code": s.code.name,
        "limit_remaining": s.limit_remaining,
        "current_limit": None
        if limit is None
        else {
            "name": limit.name,
            "requests_per_unit": limit.requests_per_unit,
            "unit": limit.unit.name,
        },
    }


async def main(addr, domain, descriptors):
    host, port = addr.rsplit(":", 1)
    channel = Channel(host, int(port))
    try:
        request = RateLimitRequest(domain=domain, descriptors=descriptors)
        response = await RateLimitServiceAsyncStub(channel).should_rate_limit(request)
    except grpclib.GRPCError as e:
        print(json.dumps({"error": e.status.name, "message": e.message}))
        return 2
    finally:
        channel.close()
    print(
        json.dumps(
            {
                "overall_code": response.overall_code.name,
                "statuses": [status(s) for s in response.statuses],
                "headers": {h.key: h.value for h in response.response_headers_to_add},
            }
        )
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], [descriptor(a) for a in sys.argv[3:]])))
