package config

// ignoredKey reports whether a key that airouter does not use is accepted
// anyway (a key of auto_ai_router configs, see the package doc), and says
// why. Such a key loads with a warning; any other unknown key is an error.
// schema is the key's path with "[]" for any list index.
func ignoredKey(schema string) (why string, ok bool) {
	switch schema {
	case "server.max_provider_retries", "server.max_fallback_attempts":
		return "failover is bounded by fallback.max_hops and fallback.time_budget", true
	case "server.session_sticky_enabled", "server.session_sticky_ttl_minutes",
		"server.session_sticky_auto_cache_control":
		return "airouter has no sticky sessions", true
	case "server.response_body_multiplier", "server.idle_conn_timeout", "server.max_idle_conns",
		"server.max_idle_conns_per_host", "server.shutdown_delay", "server.drain_upstream_on_abort",
		"server.proxy_health_timeout", "server.stdout_logs_enabled", "server.model_prices_link",
		"monitoring.log_errors", "monitoring.errors_log_path",
		"litellm_db", "redis", "kafka", "retry":
		return "not supported by airouter", true
	case "otel.logs_enabled":
		return "airouter does not export logs over OTLP; they stay in its own log output", true
	case "otel.metric_export_interval":
		return "airouter does not push metrics over OTLP; scrape /metrics", true
	}
	return "", false
}
