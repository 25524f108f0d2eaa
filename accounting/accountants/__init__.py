"""The accountants: one module per way of composing privacy events (RDP, PLD, mu-GDP, zCDP,
pure DP, the moments accountant). :mod:`accounting.compose` dispatches to them."""
