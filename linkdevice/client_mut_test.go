package linkdevice

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// The tests in this file stand on the bounds of a request and its answer
// at their exact values, and on the flood bucket's cap, where the
// client's other tests go far past them.

// answer sends the peer's answer to the request m with status and body.
func (p *peer) answer(m rpcMessage, status int, body []byte) {
	b, _ := json.Marshal(body)
	p.send(`{"jsonrpc":"2.0","id":` + string(*m.ID) + `,"result":{"status":` + strconv.Itoa(status) + `,"headers":{},"body":` + string(b) + `}}`)
}

// TestClientAnswerStatusEnds: an answer's status is 100 to 599; one
// outside ends the session as a protocol violation.
func TestClientAnswerStatusEnds(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{{99, false}, {100, true}, {599, true}, {600, false}} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			p := newPeer(t)
			type result struct {
				r   Response
				err error
			}
			done := make(chan result, 1)
			go func() {
				r, err := p.c.Do(t.Context(), Request{Method: "GET", PathAndQuery: "/", Token: testToken})
				done <- result{r, err}
			}()
			p.answer(p.next(t), tc.status, []byte("x"))
			res := <-done
			if !tc.ok {
				var pe *ProtocolError
				if err := p.c.Err(); !errors.As(err, &pe) || pe.Reason != "a request answer's status is out of range" {
					t.Errorf("status %d: session error = %v, want the status violation", tc.status, err)
				}
				if res.err == nil {
					t.Errorf("status %d: Do = %+v, want an error", tc.status, res.r)
				}
				return
			}
			if res.err != nil || res.r.Status != tc.status {
				t.Errorf("status %d: Do = %+v, %v; want the answer", tc.status, res.r, res.err)
			}
		})
	}
}

// TestClientBodiesAtTheCap: a request body of exactly MaxRequestBody is
// sent, and an answer body of exactly MaxResponseBody is delivered whole.
func TestClientBodiesAtTheCap(t *testing.T) {
	p := newPeer(t)
	type result struct {
		r   Response
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := p.c.Do(t.Context(), Request{Method: "POST", PathAndQuery: "/", Token: testToken, Body: make([]byte, MaxRequestBody)})
		done <- result{r, err}
	}()
	msgs := make(chan rpcMessage, 1)
	go func() { msgs <- p.next(t) }()
	var m rpcMessage
	select {
	case m = <-msgs:
	case res := <-done:
		t.Fatalf("Do(a body of exactly %d bytes) = %v, want it sent", MaxRequestBody, res.err)
	}
	var params requestParams
	if err := json.Unmarshal(m.Params, &params); err != nil || len(params.Body) != MaxRequestBody {
		t.Fatalf("the helper got a body of %d bytes (%v), want %d", len(params.Body), err, MaxRequestBody)
	}
	p.answer(m, 200, make([]byte, MaxResponseBody))
	res := <-done
	if res.err != nil || len(res.r.Body) != MaxResponseBody {
		t.Fatalf("Do = %d bytes, %v; want %d bytes", len(res.r.Body), res.err, MaxResponseBody)
	}
}

// TestClientFloodBucketCapped: however long a helper stays quiet, the
// bucket holds no more than a burst: after a minute's silence, a burst
// and one more notification at once is a flood.
func TestClientFloodBucketCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPeer(t)
		note := `{"jsonrpc":"2.0","method":"link.status","params":{"state":"qr"}}`
		time.Sleep(time.Minute) // would refill 240 without the cap
		for range floodBurst {
			p.send(note)
			<-p.notes
		}
		go p.send(note)
		var pe *ProtocolError
		if err := <-p.runs; !errors.As(err, &pe) || pe.Reason != "the helper flooded notifications" {
			t.Errorf("Run = %v, want the flood violation", err)
		}
		p.out.Close()
	})
}
