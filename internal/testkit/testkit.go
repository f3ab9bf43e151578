// Package testkit holds what the module's tests share: a logger that
// writes to the test's log, a buffer that tests read while loggers write to
// it, bounded waits for conditions and values that cross goroutines and
// the log, and copying a store directory. Only _test.go files import it
// (architecture_test.go fails otherwise): it is not a home for production
// code. A test's fake clock is clockwork's FakeClock, the clock the
// decision engine is built on.
package testkit
