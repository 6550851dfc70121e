package composetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"better-compute.io/compute/pkg/api"
	"better-compute.io/compute/pkg/bus"
)

// readers read every service's API in a loop while a fleet is created, and
// check each answer: an instance get answers that instance, a list holds
// every instance acknowledged before it began, account and pool gets
// answer them, the secret list holds the tenant's secret. UNAVAILABLE is
// counted (the next round retries); any other error is a wrong answer.
type readers struct {
	f     *fleet
	stop  chan struct{}
	wg    sync.WaitGroup
	reads atomic.Int64

	mu    sync.Mutex
	wrong []string
}

func (c *client) startReaders(f *fleet, workers int) *readers {
	r := &readers{f: f, stop: make(chan struct{})}
	for w := range workers {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for i := w; ; i++ {
				select {
				case <-r.stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				r.read(i % 5)
			}
		}()
	}
	return r
}

// Stop ends the reads and returns the wrong answers.
func (r *readers) Stop() []string {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wrong
}

// read makes one read of kind k and checks its answer.
func (r *readers) read(k int) {
	c, w := r.f.c, r.f.w
	acked := r.f.ackedSnapshot()
	var what string
	var err error
	var check func() string
	switch k {
	case 0:
		id, name := pick(acked)
		if id == "" {
			return
		}
		var inst api.Instance
		what, err = "instances.get", c.call(w.tenant, bus.ResourceInstances, "get", api.IDRequest{ID: id}, &inst)
		check = func() string {
			if inst.ID != id || inst.Name != name || inst.TenantID != w.tenant {
				return fmt.Sprintf("get %s answered %s %q of tenant %s", id, inst.ID, inst.Name, inst.TenantID)
			}
			return ""
		}
	case 1:
		var page api.List[api.Instance]
		what, err = "instances.list", c.call(w.tenant, bus.ResourceInstances, "list", api.InstanceListRequest{ListRequest: api.ListRequest{Limit: bus.MaxPageSize}}, &page)
		check = func() string {
			seen := map[string]bool{}
			for _, inst := range page.Items {
				seen[inst.ID] = inst.TenantID == w.tenant
			}
			for id := range acked {
				if !seen[id] {
					return fmt.Sprintf("list lacks acknowledged instance %s (%d items)", id, len(page.Items))
				}
			}
			return ""
		}
	case 2:
		var acct api.Account
		what, err = "accounts.get", c.call(w.tenant, bus.ResourceAccounts, "get", api.IDRequest{ID: w.account.ID}, &acct)
		check = func() string {
			if acct.ID != w.account.ID || acct.Config["token"] != w.secret.Ref {
				return fmt.Sprintf("accounts.get %s answered %s %v", w.account.ID, acct.ID, acct.Config)
			}
			return ""
		}
	case 3:
		var pool api.Pool
		what, err = "pools.get", c.call(w.tenant, bus.ResourcePools, "get", api.IDRequest{ID: w.pool.ID}, &pool)
		check = func() string {
			if pool.ID != w.pool.ID || pool.ProviderAccountID != w.account.ID {
				return fmt.Sprintf("pools.get %s answered %s", w.pool.ID, pool.ID)
			}
			return ""
		}
	default:
		var secrets api.List[api.Secret]
		what, err = "secrets.list", c.call(w.tenant, bus.ResourceSecrets, "list", api.ListRequest{}, &secrets)
		check = func() string {
			if len(secrets.Items) != 1 || secrets.Items[0].Ref != w.secret.Ref {
				return fmt.Sprintf("secrets.list answered %+v", secrets.Items)
			}
			return ""
		}
	}
	r.reads.Add(1)
	if api.IsCode(err, api.CodeUnavailable) {
		c.countUnavailable(what, err)
		return
	}
	msg := ""
	if err != nil {
		msg = fmt.Sprintf("%s: %v", what, err)
	} else {
		msg = check()
	}
	if msg != "" {
		r.mu.Lock()
		r.wrong = append(r.wrong, msg)
		r.mu.Unlock()
	}
}

// pick is a random entry of m ("" when m is empty).
func pick(m map[string]string) (string, string) {
	if len(m) == 0 {
		return "", ""
	}
	n := rand.IntN(len(m))
	for k, v := range m {
		if n == 0 {
			return k, v
		}
		n--
	}
	return "", ""
}
