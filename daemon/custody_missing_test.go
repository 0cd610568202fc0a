package daemon

import (
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/grants"
)

// TestSetCredentialsNamesMissingFields: a slot is connected only once every
// required field has a value; until then its state is pending and names
// the keys still owed, never a value. A field declared optional is not
// owed.
func TestSetCredentialsNamesMissingFields(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	v := req("ex", "api.example.com")
	v["fields"] = []any{
		map[string]any{"key": "api_key", "label": "API key", "type": "text", "required": true},
		map[string]any{"key": "api_secret", "label": "API secret", "type": "secret", "required": true},
		map[string]any{"key": "passphrase", "label": "Passphrase", "type": "password"},
		map[string]any{"key": "note", "label": "Note", "type": "text", "required": false},
	}
	v["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}", "X-Secret": "{{api_secret}}", "X-Pass": "{{passphrase}}"}}
	approved(t, d, "app", v)

	const value = "value-of-the-api-key-123"
	steps := []struct {
		values map[string]string
		status grants.ConnStatus
		owed   string
	}{
		{map[string]string{"api_key": value}, grants.ConnPending, grants.MissingFieldsPrefix + "api_secret, passphrase"},
		{map[string]string{"passphrase": "p"}, grants.ConnPending, grants.MissingFieldsPrefix + "api_secret"},
		{map[string]string{"api_secret": "s"}, grants.ConnConnected, ""},
	}
	for i, st := range steps {
		if err := d.grants.SetCredentials(ctx, "app", "ex", st.values); err != nil {
			t.Fatalf("step %d: SetCredentials: %v", i, err)
		}
		s, ok, err := d.grants.ConnectionState(ctx, "app", "ex")
		if err != nil || !ok || s.Status != st.status || s.LastError != st.owed {
			t.Errorf("step %d: state = %+v, %v, %v; want %s %q", i, s, ok, err, st.status, st.owed)
		}
		if strings.Contains(s.LastError, value) {
			t.Errorf("step %d: the state names a value", i)
		}
		if st.status == grants.ConnPending && s.ObtainedAt != nil {
			t.Errorf("step %d: a pending state carries obtainedAt", i)
		}
	}
}
