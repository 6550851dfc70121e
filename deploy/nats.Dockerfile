# nats-server at the version pinned in go.mod, on an empty base. `make images`
# builds it static on the host from the Go module into deploy/build/. The
# compute binary comes along only for the container health check
# (`compute health --http …/healthz`): the image has no shell and no curl.
FROM scratch
COPY --chown=65532:65532 empty/ /data/
COPY compute /compute
COPY nats-server /nats-server
USER 65532:65532
EXPOSE 4222 6222 8222
ENTRYPOINT ["/nats-server"]
CMD ["-c", "/etc/nats/nats.conf"]
