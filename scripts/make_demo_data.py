"""Regenerate the demo golden set shipped in src/rankbridge/data/demo (deterministic; text written here).

The demo corpus is the documentation of *Lumen*, a fictional cloud platform: 36 services x 7 aspects
(overview, pricing, limits, setup, troubleshooting, security, integrations) = 252 passages, written from
templates in this file, so the data is the project's own and license-clean. Each question targets one
passage and is written the way users ask -- often with other words than the docs use -- so lexical and
vector strategies do differ.

Graded qrels (0-3), as an LLM judge or a Databricks evaluation would grade:
    3  the passage that answers the question
    2  a passage of the same service that answers part of it (e.g. limits for a pricing question)
    1  the service's overview (on topic, no answer)
    0  the same aspect of a sibling service (judged: looks relevant, is not)

Run: python scripts/make_demo_data.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "rankbridge" / "data" / "demo"

SERVICES = [
    ("Vault", "encrypted object storage", "storage"),
    ("Streams", "real-time event streaming", "data"),
    ("Ledger", "an append-only audit database", "data"),
    ("Relay", "a managed message queue", "messaging"),
    ("Beacon", "uptime and synthetic monitoring", "observability"),
    ("Prism", "log search and analytics", "observability"),
    ("Forge", "container builds and image registry", "compute"),
    ("Harbor", "private networking and VPN peering", "network"),
    ("Atlas", "geospatial queries and map tiles", "data"),
    ("Quill", "document generation from templates", "apps"),
    ("Sentry Gate", "web application firewall", "security"),
    ("Keyring", "secrets and key management", "security"),
    ("Cascade", "workflow orchestration", "compute"),
    ("Echo", "transactional email delivery", "messaging"),
    ("Pulse", "product analytics dashboards", "observability"),
    ("Lattice", "a graph database", "data"),
    ("Drift", "feature flags and experiments", "apps"),
    ("Anchor", "managed PostgreSQL", "data"),
    ("Canvas", "image resizing and a media CDN", "storage"),
    ("Signal", "SMS and push notifications", "messaging"),
    ("Compass", "service discovery and DNS", "network"),
    ("Tide", "autoscaling serverless functions", "compute"),
    ("Mosaic", "a vector search index", "data"),
    ("Shelter", "backups and point-in-time restore", "storage"),
    ("Warden", "identity, SSO and user directories", "security"),
    ("Spark Lane", "batch data pipelines", "compute"),
    ("Harvest", "web scraping and crawling jobs", "apps"),
    ("Glacier Box", "cold archive storage", "storage"),
    ("Loom", "scheduled reports and exports", "apps"),
    ("Meridian", "a global load balancer", "network"),
    ("Cipher", "client-side encryption SDKs", "security"),
    ("Orbit", "device fleet management for IoT", "apps"),
    ("Current", "change data capture from databases", "data"),
    ("Switchboard", "API gateway and rate limiting", "network"),
    ("Ember", "GPU notebooks for model training", "compute"),
    ("Tally", "usage metering and invoicing", "apps"),
]

REGIONS = ["eu-west", "us-east", "ap-south", "sa-east", "eu-north", "us-west"]
TOOLS = ["Terraform", "the lumen CLI", "the web console", "Pulumi", "the REST API", "Ansible"]
PARTNERS = ["Slack", "PagerDuty", "GitHub Actions", "Datadog", "Snowflake", "Zapier", "Okta", "Jira"]
ERRORS = [
    ("LMN-403", "the access policy does not grant the role", "attach the role in Warden and retry"),
    ("LMN-409", "two writers updated the same resource", "retry with the latest revision number"),
    ("LMN-429", "the request rate went over the plan quota", "back off exponentially or raise the quota"),
    ("LMN-504", "an upstream dependency timed out", "check the status page and retry after a minute"),
    ("LMN-412", "the resource changed since it was read", "send the current ETag in If-Match"),
    ("LMN-460", "the region is read-only during maintenance", "wait for the maintenance window to end"),
]
CERTS = ["ISO 27001", "SOC 2 Type II", "HIPAA", "PCI DSS", "C5"]

ASPECTS = ["overview", "pricing", "limits", "setup", "troubleshooting", "security", "integrations"]
# a question about KEY is partly answered by the passage on VALUE (grade 2)
PARTLY = {
    "pricing": "limits",
    "limits": "pricing",
    "setup": "integrations",
    "troubleshooting": "limits",
    "security": "setup",
    "integrations": "setup",
    "overview": "integrations",
}


def passages(rng: random.Random, name: str, what: str) -> dict[str, tuple[str, str]]:
    """aspect -> (passage text, reference answer)."""
    price = rng.choice([4, 6, 9, 12, 15, 19, 24, 29, 39, 49])
    free = rng.choice([1, 2, 5, 10, 25, 50])
    unit = rng.choice(["GB stored", "million events", "thousand requests", "active seat", "vCPU hour"])
    limit = rng.choice([50, 100, 250, 500, 1000, 5000])
    burst = limit * rng.choice([2, 3, 4])
    retention = rng.choice([7, 14, 30, 90, 365])
    region = rng.choice(REGIONS)
    tool = rng.choice(TOOLS)
    minutes = rng.choice([2, 3, 5, 8, 10])
    code, cause, fix = rng.choice(ERRORS)
    cert = rng.sample(CERTS, 2)
    rotate = rng.choice([30, 60, 90])
    partners = rng.sample(PARTNERS, 3)
    hook = rng.choice(["webhooks", "an event bridge", "OpenTelemetry export"])
    return {
        "overview": (
            f"{name} is Lumen's service for {what}. Teams use {name} when they need {what} without running "
            f"the servers themselves. It is available in every Lumen region, starting with {region}, and it "
            f"shares the account, billing and access model with the rest of the platform.",
            f"{name} provides {what} as a managed Lumen service.",
        ),
        "pricing": (
            f"{name} is billed per {unit}: ${price} for each {unit} beyond the free tier, which covers the "
            f"first {free} {unit}s every month. Charges are metered hourly and invoiced monthly; annual "
            f"commitments receive a 20% discount on the {name} rate.",
            f"${price} per {unit} after the first {free} free each month; 20% off with an annual commitment.",
        ),
        "limits": (
            f"By default a {name} project may send {limit} requests per second, with bursts up to {burst} "
            f"for ten seconds. Data kept by {name} is retained for {retention} days unless a longer "
            f"retention policy is set. Quotas can be raised from the console's Quotas page.",
            f"{limit} requests per second (bursts to {burst}); data retained {retention} days by default.",
        ),
        "setup": (
            f"To enable {name}, create a project, choose a region such as {region}, and provision it with "
            f"{tool}. The first deployment takes about {minutes} minutes. Grant the lumen.{name.lower()}.admin "
            f"role to the engineers who will configure it.",
            f"Create a project, pick a region, provision with {tool}; the first deployment takes ~{minutes} minutes.",
        ),
        "troubleshooting": (
            f"If {name} returns error {code}, it means {cause}. To resolve it, {fix}. Persistent {code} "
            f"responses from {name} are logged in Prism under the {name.lower()} stream with the request id.",
            f"{code} means {cause}; {fix}.",
        ),
        "security": (
            f"{name} encrypts data at rest with AES-256 and in transit with TLS 1.3. Keys are managed in "
            f"Keyring and rotated every {rotate} days. {name} is covered by Lumen's {cert[0]} and {cert[1]} "
            f"attestations.",
            f"AES-256 at rest, TLS 1.3 in transit, keys rotated every {rotate} days; {cert[0]} and {cert[1]}.",
        ),
        "integrations": (
            f"{name} connects to {partners[0]}, {partners[1]} and {partners[2]} out of the box. Other tools "
            f"can subscribe to {name} through {hook}. Connections are configured per project and can be "
            f"tested from the console before going live.",
            f"Built-in connectors for {partners[0]}, {partners[1]} and {partners[2]}; others via {hook}.",
        ),
    }


QUESTIONS = {
    "overview": ["What is {n} used for?", "what does {n} do", "Which Lumen product handles {w}?"],
    "pricing": ["How much does {n} cost?", "{n} price per month", "Is there a free allowance for {n}?"],
    "limits": ["How many calls per second can {n} take?", "{n} quota", "How long does {n} keep my data?"],
    "setup": ["How do I get started with {n}?", "{n} deploy steps", "How long until {n} is up and running?"],
    "troubleshooting": [
        "{n} keeps failing, what does the error mean?",
        "{n} error code fix",
        "Why is {n} rejecting my requests?",
    ],
    "security": ["Is {n} encrypted?", "{n} compliance certifications", "How often are {n} keys rotated?"],
    "integrations": ["Can {n} talk to my other tools?", "{n} connectors", "Does {n} work with third-party apps?"],
}


def main() -> None:
    rng = random.Random(20261130)
    corpus: list[dict[str, object]] = []
    answers: dict[tuple[str, str], str] = {}
    by_group: dict[str, list[str]] = {}
    for name, what, group in SERVICES:
        slug = name.lower().replace(" ", "-")
        by_group.setdefault(group, []).append(slug)
        for aspect, (text, answer) in passages(rng, name, what).items():
            doc_id = f"{slug}-{aspect}"
            corpus.append(
                {
                    "_id": doc_id,
                    "title": f"{name}: {aspect}",
                    "text": text,
                    "metadata": {"service": name, "aspect": aspect},
                }
            )
            answers[(slug, aspect)] = answer

    queries: list[dict[str, object]] = []
    qrels: list[tuple[str, str, int]] = []
    qn = 0
    for name, what, group in SERVICES:
        slug = name.lower().replace(" ", "-")
        for aspect in rng.sample(ASPECTS, 3):
            qn += 1
            qid = f"q{qn:03d}"
            template_index = rng.randrange(3)
            text = QUESTIONS[aspect][template_index].format(n=name, w=what)
            style = "keyword" if template_index == 1 else "natural"
            queries.append(
                {
                    "_id": qid,
                    "text": text,
                    "metadata": {
                        "category": aspect,
                        "style": style,
                        "service": name,
                        "reference": answers[(slug, aspect)],
                    },
                }
            )
            qrels.append((qid, f"{slug}-{aspect}", 3))
            qrels.append((qid, f"{slug}-{PARTLY[aspect]}", 2))
            if aspect != "overview" and PARTLY[aspect] != "overview":
                qrels.append((qid, f"{slug}-overview", 1))
            siblings = [s for s in by_group[group] if s != slug]
            if siblings:
                qrels.append((qid, f"{rng.choice(siblings)}-{aspect}", 0))

    (OUT / "qrels").mkdir(parents=True, exist_ok=True)
    with open(OUT / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for doc in corpus:
            fh.write(json.dumps(doc) + "\n")
    with open(OUT / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in queries:
            fh.write(json.dumps(q) + "\n")
    with open(OUT / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, doc, label in qrels:
            fh.write(f"{qid}\t{doc}\t{label}\n")
    print(f"{len(corpus)} passages, {len(queries)} queries, {len(qrels)} judgments -> {OUT}")


if __name__ == "__main__":
    main()
