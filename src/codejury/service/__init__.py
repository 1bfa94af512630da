"""The review service: ``codejury serve`` (webhooks, ingest, metrics) and ``codejury worker``.

- ``webhooks``: GitHub and GitLab deliveries verified (constant-time) and turned into a
  ``ReviewRequest``, or a reason to skip them (draft, bot, an action that changes no code);
- ``jobs``: one queued review, run through the composition root (``codejury.session``) as ``codejury review --url
  URL --publish``;
- ``local_queue``: the embedded queue, persisted in a SQLite file, run inside ``codejury serve``;
- ``pg_queue``: the distributed queue on PostgreSQL (Procrastinate), run by ``codejury worker``;
- ``deliveries``: which webhook deliveries were already seen (replays are answered, not queued);
- ``github_app``: a GitHub App's installation tokens (JWT signed with its private key);
- ``app``: the Starlette application; ``commands``: the two click commands.
"""
