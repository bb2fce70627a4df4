#!/usr/bin/env bash
# Fetch the Kafka broker classpath from Maven Central into the cache (no tarball, no Docker).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

POM="$RLSTREAM_ROOT/tools/kafka/pom.xml"
LIBS="$CACHE/kafka/libs"
h="$(stamp_hash kafka "$(sha256sum "$POM" | cut -c1-64)" 1)"
if stamp_ok kafka "$h" && ls "$LIBS"/kafka_2.13-*.jar >/dev/null 2>&1; then
  echo "[kafka] cached: $(ls "$LIBS"/kafka_2.13-*.jar | xargs -n1 basename)"
  exit 0
fi
with_lock kafka
if stamp_ok kafka "$h" && ls "$LIBS"/kafka_2.13-*.jar >/dev/null 2>&1; then exit 0; fi
t="$(now)"
tmp="$CACHE/kafka/.libs.tmp"
rm -rf "$tmp" && mkdir -p "$tmp"
mvn -B -q -f "$POM" -Dmaven.repo.local="$CACHE/m2" \
  org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$tmp"
# Exactly one slf4j binding, else logging silently goes to the wrong backend.
n="$(ls "$tmp" | grep -cE '^(log4j-slf4j|slf4j-(simple|reload4j|log4j12))' || true)"
if [[ "$n" != "1" ]]; then echo "[kafka] expected one slf4j binding, found $n" >&2; ls "$tmp" >&2; exit 1; fi
rm -rf "$LIBS" && mv "$tmp" "$LIBS"
stamp_write kafka "$h"
echo "[kafka] $(ls "$LIBS" | wc -l) jars in $LIBS"
timing "fetch kafka jars" "$t"
