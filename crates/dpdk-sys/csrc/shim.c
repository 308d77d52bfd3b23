#include <rte_config.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_cycles.h>
#include <rte_lpm.h>
#include <rte_ring.h>
#include "shim.h"

uint16_t shim_rte_eth_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **rx_pkts,
                               uint16_t nb_pkts)
{
	return rte_eth_rx_burst(port_id, queue_id, rx_pkts, nb_pkts);
}

uint16_t shim_rte_eth_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **tx_pkts,
                               uint16_t nb_pkts)
{
	return rte_eth_tx_burst(port_id, queue_id, tx_pkts, nb_pkts);
}

struct rte_mbuf *shim_rte_pktmbuf_alloc(struct rte_mempool *mp)
{
	return rte_pktmbuf_alloc(mp);
}

int shim_rte_pktmbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs,
                                unsigned int count)
{
	return rte_pktmbuf_alloc_bulk(pool, mbufs, count);
}

void shim_rte_pktmbuf_free(struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
}

void shim_rte_pktmbuf_free_bulk(struct rte_mbuf **mbufs, unsigned int count)
{
	rte_pktmbuf_free_bulk(mbufs, count);
}

char *shim_rte_pktmbuf_append(struct rte_mbuf *m, uint16_t len)
{
	return rte_pktmbuf_append(m, len);
}

char *shim_rte_pktmbuf_adj(struct rte_mbuf *m, uint16_t len)
{
	return rte_pktmbuf_adj(m, len);
}

int shim_rte_pktmbuf_trim(struct rte_mbuf *m, uint16_t len)
{
	return rte_pktmbuf_trim(m, len);
}

unsigned int shim_rte_mempool_avail_count(const struct rte_mempool *mp)
{
	return rte_mempool_avail_count(mp);
}

int shim_rte_errno(void)
{
	return rte_errno;
}

uint64_t shim_rte_rdtsc(void)
{
	return rte_rdtsc();
}

unsigned int shim_rte_lcore_id(void)
{
	return rte_lcore_id();
}

int shim_rte_lpm_lookup(struct rte_lpm *lpm, uint32_t ip, uint32_t *next_hop)
{
	return rte_lpm_lookup(lpm, ip, next_hop);
}

int shim_rte_lpm_lookup_bulk(const struct rte_lpm *lpm, const uint32_t *ips, uint32_t *next_hops,
                             unsigned int n)
{
	return rte_lpm_lookup_bulk(lpm, ips, next_hops, n);
}

void shim_rte_lpm_lookupx4(const struct rte_lpm *lpm, const uint32_t ip[4], uint32_t hop[4],
                           uint32_t defv)
{
	xmm_t v = _mm_loadu_si128((const __m128i *)ip);
	rte_lpm_lookupx4(lpm, v, hop, defv);
}

unsigned int shim_rte_ring_enqueue_burst(struct rte_ring *r, void *const *objs, unsigned int n)
{
	return rte_ring_enqueue_burst(r, objs, n, NULL);
}

unsigned int shim_rte_ring_dequeue_burst(struct rte_ring *r, void **objs, unsigned int n)
{
	return rte_ring_dequeue_burst(r, objs, n, NULL);
}

unsigned int shim_rte_ring_count(const struct rte_ring *r)
{
	return rte_ring_count(r);
}
