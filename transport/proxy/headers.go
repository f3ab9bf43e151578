package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/airouter/airouter/domain"
)

// Header names the proxy writes.
const (
	hdrAttempts  = "X-Fallback-Attempts"
	hdrTrail     = "X-Fallback-Trail"
	hdrDetail    = "X-Fallback-Detail"
	hdrRequestID = "X-Airouter-Request-Id"
)

// Limits on the trail headers.
const (
	maxTrailHeader  = 2048
	maxDetailHeader = 4096
	maxDetailMsg    = 120
)

// hopByHop are the headers that belong to one connection (RFC 9110 §7.6.1).
func hopByHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// dropUpstream reports whether a client header stays out of an upstream
// request: hop-by-hop and proxy-identifying headers, the client's own
// credentials and what the transport sets itself.
func dropUpstream(k string) bool {
	if hopByHop(k) {
		return true
	}
	switch k {
	case "Authorization", "X-Api-Key", "Api-Key", "Host", "Content-Length",
		"Accept-Encoding", "Forwarded", "X-Real-Ip", "Via", "X-Aar-Proxy-Client":
		return true
	}
	return strings.HasPrefix(k, "X-Forwarded-")
}

// upstreamHeader builds the headers of an upstream request: the client's
// headers minus the dropped ones, with the credential's key.
func upstreamHeader(in http.Header, c *credState, forwardAuth bool) http.Header {
	out := make(http.Header, len(in)+2)
	conn := in["Connection"]
	for k, vv := range in {
		if dropUpstream(k) || listedIn(conn, k) {
			continue
		}
		out[k] = vv // shared read-only with the client request
	}
	switch {
	case c.typ == domain.CredentialAnthropic:
		if c.auth != "" {
			out["X-Api-Key"] = c.authHdr
		}
		if _, ok := out["Anthropic-Version"]; !ok {
			out["Anthropic-Version"] = []string{"2023-06-01"}
		}
	case c.auth != "":
		out["Authorization"] = c.authHdr
	case c.proxy && forwardAuth:
		// A keyless proxy credential is another router that shares this
		// one's client keys, so the client's key is passed on. The master
		// key is never forwarded: it would open the other router's admin
		// API.
		if a, ok := in["Authorization"]; ok {
			out["Authorization"] = a
		}
	}
	if _, ok := out["Content-Type"]; !ok {
		out["Content-Type"] = []string{"application/json"}
	}
	return out
}

// listedIn reports whether a Connection header names k.
func listedIn(conn []string, k string) bool {
	for _, v := range conn {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), k) {
				return true
			}
		}
	}
	return false
}

// attemptValues are the X-Fallback-Attempts values of the common counts,
// built once; a header value slice is only read by the server.
var attemptValues = func() [9][]string {
	var s [9][]string
	for i := range s {
		s[i] = []string{strconv.Itoa(i)}
	}
	return s
}()

// setFallbackHeaders writes X-Fallback-Attempts, X-Fallback-Trail and,
// when exposed, X-Fallback-Detail for the hops made so far.
func setFallbackHeaders(h http.Header, hops []hop, detail bool) {
	if len(hops) < len(attemptValues) {
		h[hdrAttempts] = attemptValues[len(hops)]
	} else {
		h[hdrAttempts] = []string{strconv.Itoa(len(hops))}
	}
	if len(hops) == 0 {
		return
	}
	if len(hops) == 1 && hops[0].class == "ok" {
		h[hdrTrail] = hops[0].cand.okTrail
	} else {
		h[hdrTrail] = []string{joinCapped(hops, maxTrailHeader, func(b *strings.Builder, x *hop) {
			b.WriteString(x.cand.label)
			b.WriteByte('=')
			b.WriteString(string(x.class))
		})}
	}
	if !detail {
		return
	}
	h[hdrDetail] = []string{joinCapped(hops, maxDetailHeader, func(b *strings.Builder, x *hop) {
		b.WriteString(x.cand.label)
		b.WriteByte('=')
		b.WriteString(string(x.class))
		if x.status > 0 {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(x.status))
		}
		b.WriteString(" t=")
		b.WriteString(strconv.FormatInt(x.startMS, 10))
		b.WriteByte('+')
		b.WriteString(strconv.FormatInt(x.ms, 10))
		b.WriteString("ms")
		if x.msg != "" {
			b.WriteString(" msg=")
			b.WriteString(safeHeaderValue(strings.ReplaceAll(truncate(x.msg, maxDetailMsg), ";", ",")))
		}
	})}
}

// joinCapped joins one rendering per hop with "; ", stopping before max
// bytes and saying how many hops were left out.
func joinCapped(hops []hop, max int, render func(*strings.Builder, *hop)) string {
	var b, one strings.Builder
	for i := range hops {
		one.Reset()
		render(&one, &hops[i])
		if b.Len() > 0 && b.Len()+2+one.Len() > max-16 {
			b.WriteString("; +")
			b.WriteString(strconv.Itoa(len(hops) - i))
			b.WriteString(" more")
			break
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(one.String())
	}
	return b.String()
}

// safeHeaderValue keeps printable ASCII and space and percent-encodes
// everything else (and '%'), so a name from config can never break a
// header.
func safeHeaderValue(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}
