// Package config reads airouter's YAML configuration file: it decodes it
// strictly (an unknown key is an error naming its path), resolves
// os.environ/VAR values, applies defaults, validates everything at once
// (each problem names its path and value, secrets redacted) and turns the
// result into the plain values the rest of the router uses: the
// domain.BanPolicy, the failover settings and the route table. It does no
// I/O beyond reading the file in Load and imports only domain.
package config
