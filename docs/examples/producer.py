#!/usr/bin/env python3
"""A rides service publishing Live Activity events to Liveline over HTTPS.

Standard library only. It sends one event in structured mode, then two in a batch, then
the first one again, as a producer's retry after a lost answer would: Liveline answers
that with `duplicate` and publishes nothing new.

    python3 docs/examples/producer.py --url http://127.0.0.1:8080 --key "$LIVELINE_PRODUCER_KEY"

Every answer is handled as Liveline documents it (docs/producers.md):
  202  every event is confirmed by the broker: done.
  400  an event would be dead-lettered; the answer names each one and why. Fix it, do not retry.
  401/403  the key is wrong, or not allowed this domain.
  409  the event id was used before for another body: a new event needs a new id.
  413/415  too large, or the wrong Content-Type.
  429/503  retry the same request, unchanged, after Retry-After seconds.
"""

import argparse
import datetime
import json
import sys
import time
import urllib.error
import urllib.request
import uuid


def ride_event(activity_id, user_id, status, eta_minutes):
    """One ride's full current state, as a CloudEvent in structured mode."""
    now = datetime.datetime.now(datetime.timezone.utc)
    eta = int(now.timestamp()) + eta_minutes * 60
    return {
        "specversion": "1.0",
        "id": str(uuid.uuid4()),
        "source": "//rides.example.com",
        "type": "ride.status",
        "subject": activity_id,
        "time": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": {
            "activityId": activity_id,
            "userId": user_id,
            "contentState": {
                "driverName": "Maria",
                "driverPhoto": "car.fill",
                "vehicleDescription": "White Toyota Camry",
                "etaStartSeconds": eta,
                "etaEndSeconds": eta + 300,
                "status": status,
                "distanceRemaining": 3.2,
            },
        },
    }


def post(url, key, body, content_type, attempts=6):
    """POSTs the same bytes until Liveline answers for good; returns (status, answer).

    A 429 or 503 is retried after its Retry-After, and so is a connection error: the event
    ids make a retry safe, so nothing is published twice.
    """
    data = json.dumps(body).encode()
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(
            url + "/v1/events", data=data, method="POST",
            headers={"Content-Type": content_type, "Authorization": "Bearer " + key})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            answer = json.load(error)
            if error.code not in (429, 503) or attempt == attempts:
                return error.code, answer
            delay = int(error.headers.get("Retry-After", "1"))
        except urllib.error.URLError:
            if attempt == attempts:
                raise
            delay = attempt
        time.sleep(delay)
    raise RuntimeError("unreachable")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="the Liveline api")
    parser.add_argument("--key", required=True, help="this producer's key (liveline producer-key)")
    parser.add_argument("--activity", default="ride-" + uuid.uuid4().hex[:8], help="the ride's activity id")
    parser.add_argument("--user", default="u-1", help="the rider's user id")
    arguments = parser.parse_args()

    assigned = ride_event(arguments.activity, arguments.user, "driverAssigned", 12)
    en_route = ride_event(arguments.activity, arguments.user, "driverEnRoute", 8)
    arrived = ride_event(arguments.activity, arguments.user, "driverArrived", 0)

    results = [
        ("one event", post(arguments.url, arguments.key, assigned, "application/cloudevents+json")),
        ("a batch", post(arguments.url, arguments.key, [en_route, arrived], "application/cloudevents-batch+json")),
        ("the first again", post(arguments.url, arguments.key, assigned, "application/cloudevents+json")),
    ]
    failed = False
    for what, (status, answer) in results:
        if status != 202:
            failed = True
            print(f"{what}: {status} {answer['error']['code']}: {answer['error']['message']}")
            for event in answer.get("events", []):
                print(f"  event {event['index']} ({event.get('id')}): {event['reason']}: {event['message']}")
            continue
        for event in answer["events"]:
            print(f"{what}: {event['id']} {event['status']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
