"""The mixed agent workload for ``python -m kioku.benchmark.load`` (run by locust, not imported).

Each simulated agent loops over what an agent turn does: recall (most), remember, load its
pinned rules, and read and write its run-state. Weights: recall 5, remember 3, load_pinned 2,
set_state 2, get_state 1. Every request must answer 2xx; anything else is a failure.
``KIOKU_LOAD_HOSTS`` (comma-separated base URLs) spreads the agents over several replicas,
agent i on replica i mod N, as a round-robin load balancer would.
"""

from __future__ import annotations

import itertools
import random

from locust import HttpUser, between, task

from kioku.settings.internal import load_hosts

CONTEXT = "/api/v1/contexts/load"
QUERIES = (
    "which port does staging listen on",
    "what does Alice drink",
    "deploy checklist for friday",
    "東京のオフィスの住所",
    "who reviews database migrations",
)
_counter = itertools.count()
_HOSTS = load_hosts()


class Agent(HttpUser):
    """One agent: short think time between calls, its own state key."""

    wait_time = between(0.0, 0.05)

    def on_start(self) -> None:
        self.number = next(_counter)
        if _HOSTS:
            self.client.base_url = _HOSTS[self.number % len(_HOSTS)]
        self.set_state()  # so get_state reads a key that exists (an unknown key is a 404)

    @task(5)
    def recall(self) -> None:
        query = random.choice(QUERIES)
        self.client.post(f"{CONTEXT}/recall", json={"query": query, "k": 5}, name="recall")

    @task(3)
    def remember(self) -> None:
        summary = f"agent {self.number} noted fact {random.randrange(10**9)} about staging"
        self.client.post(f"{CONTEXT}/memories", json={"summary": summary}, name="remember")

    @task(2)
    def load_pinned(self) -> None:
        self.client.get(f"{CONTEXT}/pinned?trust_tier=trusted", name="load_pinned")

    @task(2)
    def set_state(self) -> None:
        value = {"step": random.randrange(100)}
        self.client.put(
            f"{CONTEXT}/state/agent-{self.number}",
            json={"value": value, "ttl_seconds": 600},
            name="set_state",
        )

    @task(1)
    def get_state(self) -> None:
        self.client.get(f"{CONTEXT}/state/agent-{self.number}", name="get_state")
