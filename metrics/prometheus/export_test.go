package prometheus

// PushLoopEnded reports whether the goroutine that pushes every
// push_interval has returned (true when there is none): after it, nothing
// but Close's last push reaches the Pushgateway.
func PushLoopEnded(e *Exporter) bool {
	if e.pushDone == nil {
		return true
	}
	select {
	case <-e.pushDone:
		return true
	default:
		return false
	}
}
