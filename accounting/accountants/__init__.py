"""The accountants: one module per way of composing privacy events (RDP, PLD, mu-GDP, zCDP,
pure DP, the moments accountant, DPGM's Hölder bound for mechanisms sharing a batch).
:mod:`accounting.compose` dispatches to them."""
