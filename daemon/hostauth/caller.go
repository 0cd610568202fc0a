package hostauth

import "context"

// The caller is a context value: the API's security chain sets it on every
// authenticated host request (WithHost). A context without one is the
// administrator's (the ctl channel, and the daemon's own calls): it sees
// and may do everything. Every app-scoped part of the daemon reads it with
// CallerHost to decide what the caller may see.

type callerKey struct{}

// WithHost returns ctx acting for paired host hostID: every app-scoped
// call made with it is limited to the apps that host may reach.
func WithHost(ctx context.Context, hostID string) context.Context {
	return context.WithValue(ctx, callerKey{}, hostID)
}

// CallerHost returns the paired host ctx acts for (WithHost); ok is false
// on the ctl channel, which is the administrator.
func CallerHost(ctx context.Context) (hostID string, ok bool) {
	hostID, ok = ctx.Value(callerKey{}).(string)
	return hostID, ok
}
