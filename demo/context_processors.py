from demo.services import live_pool_waiting


def demo_live(request) -> dict:
    """`demo_live_waiting` on the pool pages: what the pool `demo-live` waits for. A callable, so that only a page
    that shows it runs its queries."""
    return {"demo_live_waiting": live_pool_waiting, "demo_about": True}
