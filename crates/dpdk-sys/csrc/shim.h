/* One-line wrappers around DPDK's static-inline fast-path functions, which have no
 * symbol in the shared libraries and so cannot be called through FFI directly.
 * Every wrapper is called at most once per burst on the hot path (never per packet),
 * so the call costs nothing measurable (../shared/reference measured it). */
#ifndef DP_SHIM_H
#define DP_SHIM_H
#include <stdint.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_lpm.h>

uint16_t shim_rte_eth_rx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **rx_pkts,
                               uint16_t nb_pkts);
uint16_t shim_rte_eth_tx_burst(uint16_t port_id, uint16_t queue_id, struct rte_mbuf **tx_pkts,
                               uint16_t nb_pkts);
struct rte_mbuf *shim_rte_pktmbuf_alloc(struct rte_mempool *mp);
int shim_rte_pktmbuf_alloc_bulk(struct rte_mempool *pool, struct rte_mbuf **mbufs,
                                unsigned int count);
void shim_rte_pktmbuf_free(struct rte_mbuf *m);
void shim_rte_pktmbuf_free_bulk(struct rte_mbuf **mbufs, unsigned int count);
char *shim_rte_pktmbuf_append(struct rte_mbuf *m, uint16_t len);
char *shim_rte_pktmbuf_adj(struct rte_mbuf *m, uint16_t len);
int shim_rte_pktmbuf_trim(struct rte_mbuf *m, uint16_t len);
unsigned int shim_rte_mempool_avail_count(const struct rte_mempool *mp);
int shim_rte_errno(void);
uint64_t shim_rte_rdtsc(void);
unsigned int shim_rte_lcore_id(void);
int shim_rte_lpm_lookup(struct rte_lpm *lpm, uint32_t ip, uint32_t *next_hop);
int shim_rte_lpm_lookup_bulk(const struct rte_lpm *lpm, const uint32_t *ips, uint32_t *next_hops,
                             unsigned int n);
void shim_rte_lpm_lookupx4(const struct rte_lpm *lpm, const uint32_t ip[4], uint32_t hop[4],
                           uint32_t defv);
struct rte_ring;
unsigned int shim_rte_ring_enqueue_burst(struct rte_ring *r, void *const *objs, unsigned int n);
unsigned int shim_rte_ring_dequeue_burst(struct rte_ring *r, void **objs, unsigned int n);
unsigned int shim_rte_ring_count(const struct rte_ring *r);
#endif
