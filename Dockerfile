# airouter as a container: a static binary on distroless, run as a non-root
# user, no shell. The health check is the binary itself (`airouter probe`
# against /readyz). The embedded event store lives on the /data volume;
# with events.nats_url pointing at a NATS cluster nothing is stored there.
#
#   docker build -t airouter --build-arg VERSION=v1.0.0 --build-arg COMMIT=$(git rev-parse HEAD) .
#   docker run -p 8080:8080 -e AIROUTER_MASTER_KEY=... -e OPENAI_API_KEY=... -v airouter-data:/data airouter

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/airouter ./cmd/airouter \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/airouter /airouter
COPY --from=build --chown=65532:65532 /out/data /data
COPY deploy/docker/airouter.yaml /etc/airouter/airouter.yaml
# distroless' nonroot user.
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=2m --retries=3 \
  CMD ["/airouter", "probe", "-timeout", "3s", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/airouter"]
CMD ["serve", "-config", "/etc/airouter/airouter.yaml"]
