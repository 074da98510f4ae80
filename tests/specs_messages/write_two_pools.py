"""One action writes unowned pages of two pools at once (prefill's and decode's): the message
must name each pool with its own pages (each pool's pages are numbered from 0)."""

from ownership import Request, Spec, action, page, pool


class WriteTwoPools(Spec):
    requests = 1
    small = pool(1)
    large = pool(3)

    @action
    def scribble(self, s, r: Request):
        """r1 writes page 0 of the small pool and page 2 of the large one, holding neither."""
        s.write("small", r, page(0))
        s.write("large", r, page(2))
