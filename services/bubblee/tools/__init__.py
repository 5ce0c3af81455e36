"""Programs that use the rules and are not rules: the game never imports them."""
