# frozen_string_literal: true

require "json"
require "sinatra/base"

module Tally
  # Counts page views per slug; the counts live in memory and reset on deploy.
  class App < Sinatra::Base
    COUNTS = Hash.new(0)
    LOCK = Mutex.new

    post "/hits/:slug" do
      count = LOCK.synchronize { COUNTS[params[:slug]] += 1 }
      content_type :json
      { slug: params[:slug], count: count }.to_json
    end

    get "/health" do
      "ok"
    end
  end
end
