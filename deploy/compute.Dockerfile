# The compute binary (every service, the emulators, `compute health`) on an
# empty base. `make images` builds it static on the host into deploy/build/,
# the build context, so no image is pulled and nothing runs at build time.
# Rarely changing layers first: only the last one changes with the code.
FROM scratch
# TLS roots for the real provider APIs (api.hetzner.cloud, a PVE cluster)
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# /data belongs to the runtime user, so a named volume mounted there does too
COPY --chown=65532:65532 empty/ /data/
COPY compute /compute
USER 65532:65532
WORKDIR /data
ENTRYPOINT ["/compute"]
