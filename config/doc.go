// Package config reads airouter's YAML configuration file: it decodes it
// strictly (an unknown key is an error naming its path), resolves
// os.environ/VAR values, applies defaults, validates everything at once
// (each problem names its path and value, secrets redacted) and turns the
// result into the plain values the rest of the router uses: the
// domain.BanPolicy, the failover settings, the route table and the event
// log's settings. It does no I/O beyond reading the file in Load (and
// checking that events.creds_file can be read), and imports only domain,
// redact and streamspec: no transport, no NATS. It is not on an event's
// path; cmd/airouter hands its values to the packages that are (the
// BanPolicy to decisions, routes and limits to transport/proxy, the stream
// settings to transport/eventlog), and nothing reads config at runtime.
//
// Several rules are accepted for compatibility with auto_ai_router configs,
// so such a file loads unchanged: keys airouter does not use load with a
// warning (ignoredKey), every scalar may be written as a string, an alias
// of a list inside a list is spliced into it, request_timeout -1 means no
// timeout, an alias to itself is ignored, and with no models configured
// every credential serves every model.
package config
